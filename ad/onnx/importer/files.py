"""Reading a model: the limits on what is accepted, element types, tensors checked before they
are allocated, and ``load``, which parses protobuf only (external data is read from files
inside the model's folder)."""
from __future__ import annotations

import math
import os

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

MAX_ELEMENTS = 1 << 28       # per tensor: 2 GiB of float64
MAX_RANK = 32
MAX_FILE_BYTES = 1 << 32


class OnnxImportError(ValueError):
    """A model (or one of its nodes) that the importer refuses, and why."""


DTYPES = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64, TensorProto.FLOAT16: np.float16,
          TensorProto.INT8: np.int8, TensorProto.INT16: np.int16, TensorProto.INT32: np.int32,
          TensorProto.INT64: np.int64, TensorProto.UINT8: np.uint8, TensorProto.UINT16: np.uint16,
          TensorProto.UINT32: np.uint32, TensorProto.UINT64: np.uint64, TensorProto.BOOL: np.bool_}


def dtype_of(code: int, where: str) -> np.dtype:
    if code not in DTYPES:
        name = TensorProto.DataType.Name(code) if code in TensorProto.DataType.values() else str(code)
        raise OnnxImportError(f"{where}: element type {name} is not supported (supported: "
                              f"{', '.join(TensorProto.DataType.Name(c) for c in DTYPES)})")
    return np.dtype(DTYPES[code])


def check_shape(shape, where: str):
    shape = tuple(int(d) for d in shape)
    if len(shape) > MAX_RANK or any(d < 0 for d in shape) or math.prod(shape) > MAX_ELEMENTS:
        raise OnnxImportError(f"{where}: shape {shape} is refused (negative, rank > {MAX_RANK}, or more "
                              f"than {MAX_ELEMENTS} elements)")
    return shape


def tensor_array(t: TensorProto, where: str) -> np.ndarray:
    """A TensorProto's value, its dims and dtype checked before anything is allocated."""
    where = f"{where} {t.name!r}".rstrip()
    dtype = dtype_of(t.data_type, where)
    shape = check_shape(t.dims, where)
    if t.data_location == TensorProto.EXTERNAL:
        raise OnnxImportError(f"{where}: external data was not loaded (load the model from its path)")
    if t.HasField("raw_data") and len(t.raw_data) != math.prod(shape) * dtype.itemsize:
        raise OnnxImportError(f"{where}: raw_data holds {len(t.raw_data)} bytes for shape {shape} of {dtype}")
    try:
        return np.asarray(numpy_helper.to_array(t), dtype=dtype)
    except Exception as exc:
        raise OnnxImportError(f"{where}: malformed tensor ({exc})") from None


# -- loading --------------------------------------------------------------------------------

def load(model_or_path) -> onnx.ModelProto:
    """Parse a model (a path, bytes or a ModelProto) without running anything from it; external
    data is read only from files inside the model's folder."""
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path
    if isinstance(model_or_path, (bytes, bytearray)):
        return _parse(bytes(model_or_path), "the model bytes")
    path = os.fspath(model_or_path)
    size = os.path.getsize(path)
    if size > MAX_FILE_BYTES:
        raise OnnxImportError(f"{path}: {size} bytes is more than the {MAX_FILE_BYTES} accepted")
    with open(path, "rb") as f:
        model = _parse(f.read(), path)
    _load_external(model, os.path.dirname(os.path.abspath(path)), path)
    return model


def _parse(data: bytes, where: str) -> onnx.ModelProto:
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:
        raise OnnxImportError(f"{where}: not a valid ONNX protobuf ({exc})") from None
    if not model.HasField("graph"):
        raise OnnxImportError(f"{where}: the model has no graph (is it an ONNX file?)")
    return model


def _load_external(model: onnx.ModelProto, folder: str, where: str):
    for t in model.graph.initializer:
        if t.data_location != TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in t.external_data}
        name = f"{where}: initializer {t.name!r}"
        location = info.get("location", "")
        full = os.path.realpath(os.path.join(folder, location))
        if not location or os.path.isabs(location) or os.path.commonpath([full, os.path.realpath(folder)]) \
                != os.path.realpath(folder):
            raise OnnxImportError(f"{name}: external data location {location!r} is outside the model's folder")
        if not os.path.isfile(full):
            raise OnnxImportError(f"{name}: external data file {location!r} does not exist")
        dtype = dtype_of(t.data_type, name)
        nbytes = math.prod(check_shape(t.dims, name)) * dtype.itemsize
        offset, length = int(info.get("offset", 0)), int(info.get("length", nbytes))
        if length != nbytes or offset < 0 or offset + length > os.path.getsize(full):
            raise OnnxImportError(f"{name}: external data (offset {offset}, length {length}) does not fit "
                                  f"{location!r} or the tensor's {nbytes} bytes")
        with open(full, "rb") as f:
            f.seek(offset)
            t.raw_data = f.read(length)
        del t.external_data[:]
        t.data_location = TensorProto.DEFAULT
