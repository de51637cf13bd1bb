"""Reading a model: the limits on what is accepted, element types, tensors checked before they
are allocated, and ``load``, which parses protobuf only (external data is read from files
inside the model's folder)."""
from __future__ import annotations

import math
import os

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

#: the largest tensor accepted, by default: 2**31 elements and 4 bytes an element (8 GiB), so
#: 2**30 of float64; ``max_elements=`` of ``from_onnx`` raises both
MAX_ELEMENTS = 1 << 31
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


def check_shape(shape, where: str, dtype=None, max_elements: int = MAX_ELEMENTS):
    """``shape`` as ints, refused (naming ``where`` and the size) if a dimension is negative, the
    rank is over ``MAX_RANK``, or it holds more than ``max_elements`` elements or, of ``dtype``,
    more than ``4 * max_elements`` bytes: checked before anything of that size is allocated."""
    shape = tuple(int(d) for d in shape)
    if len(shape) > MAX_RANK or any(d < 0 for d in shape):
        raise OnnxImportError(f"{where}: shape {shape} is refused (a negative dimension or rank > {MAX_RANK})")
    size = math.prod(shape)
    nbytes = size * (np.dtype(dtype).itemsize if dtype is not None else 0)
    if size > max_elements or nbytes > 4 * max_elements:
        of = f" ({_bytes(nbytes)} of {np.dtype(dtype).name})" if dtype is not None else ""
        raise OnnxImportError(f"{where}: shape {shape} is refused: {size:,} elements{of}, over the limit of "
                              f"{max_elements:,} elements and {_bytes(4 * max_elements)}; pass max_elements= "
                              "to ad.from_onnx to raise it")
    return shape


def _bytes(n: int) -> str:
    unit = max((u for u in range(7) if n >= 1024 ** u), default=0)
    return f"{n / 1024 ** unit:.4g} {('bytes', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB')[unit]}"


#: where a TensorProto keeps its values when it has no raw_data (the field per element type)
_FIELDS = {TensorProto.FLOAT: "float_data", TensorProto.DOUBLE: "double_data", TensorProto.INT64: "int64_data",
           TensorProto.UINT32: "uint64_data", TensorProto.UINT64: "uint64_data"}


def tensor_array(t: TensorProto, where: str, max_elements: int = MAX_ELEMENTS) -> np.ndarray:
    """A TensorProto's value, its dims, dtype and the amount of data it holds checked against
    each other before anything is allocated."""
    where = f"{where} {t.name!r}".rstrip()
    dtype = dtype_of(t.data_type, where)
    shape = check_shape(t.dims, where, dtype, max_elements)
    if t.data_location == TensorProto.EXTERNAL:
        raise OnnxImportError(f"{where}: external data was not loaded (load the model from its path)")
    if t.HasField("raw_data"):
        if len(t.raw_data) != math.prod(shape) * dtype.itemsize:
            raise OnnxImportError(f"{where}: raw_data holds {len(t.raw_data)} bytes for shape {shape} of {dtype}")
    else:
        field = _FIELDS.get(t.data_type, "int32_data")
        if len(getattr(t, field)) != math.prod(shape):
            raise OnnxImportError(f"{where}: {field} holds {len(getattr(t, field))} values for shape {shape} "
                                  f"({math.prod(shape)} elements)")
    try:
        return np.asarray(numpy_helper.to_array(t), dtype=dtype)
    except Exception as exc:
        raise OnnxImportError(f"{where}: malformed tensor ({exc})") from None


# -- loading --------------------------------------------------------------------------------

def load(model_or_path, max_elements: int = MAX_ELEMENTS) -> onnx.ModelProto:
    """Parse a model (a path, bytes or a ModelProto) without running anything from it; external
    data is read only from files inside the model's folder, each tensor's size checked first."""
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
    _load_external(model, os.path.dirname(os.path.abspath(path)), path, max_elements)
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


def _load_external(model: onnx.ModelProto, folder: str, where: str, max_elements: int):
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
        nbytes = math.prod(check_shape(t.dims, name, dtype, max_elements)) * dtype.itemsize
        offset, length = int(info.get("offset", 0)), int(info.get("length", nbytes))
        if length != nbytes or offset < 0 or offset + length > os.path.getsize(full):
            raise OnnxImportError(f"{name}: external data (offset {offset}, length {length}) does not fit "
                                  f"{location!r} or the tensor's {nbytes} bytes")
        with open(full, "rb") as f:
            f.seek(offset)
            t.raw_data = f.read(length)
        del t.external_data[:]
        t.data_location = TensorProto.DEFAULT
