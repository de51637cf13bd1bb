"""The ad-check command line: the library, the gallery, a module's function, JSON, exit codes."""
import json
import textwrap

from ad.checktools.cli import Progress, main

MODULE = textwrap.dedent("""
    import numpy as np
    import ad

    def loss(W, x):
        return np.sum(np.tanh(W @ x) ** 2)

    def example():
        return np.ones((2, 3)), np.arange(3.0)

    @ad.primitive                 # named double, double_2, ...: the file is run once per load
    def double(x):
        return 2.0 * x

    @ad.rrule(double)
    def _double_rule(x):
        return double(x), lambda dy: (3.0 * dy,)        # wrong: should be 2 dy

    def uses_double(x):
        return np.sum(double(x))

    def real_times_imag(z):
        return np.sum(np.real(z) * np.imag(z))
""")


def _module(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(MODULE)
    return str(path)


def test_library_subset(capsys):
    assert main(["--library", "--only", "sin", "clip"]) == 0
    out, err = capsys.readouterr()
    assert "report(s) ok, 0 failed" in out and "done" in err


def test_gallery_entries_are_caught(capsys):
    assert main(["--gallery", "--only", "wrong sign", "affine pullback"]) == 0
    assert "2 of 2 wrong rule(s) caught" in capsys.readouterr().out


def test_a_module_function(tmp_path, capsys):
    path = _module(tmp_path)
    assert main([f"{path}:loss", "--randn", "2,3", "3"]) == 0
    assert main([f"{path}:loss", "--example", f"{path}:example", "--json", str(tmp_path / "r.json")]) == 0
    data = json.loads((tmp_path / "r.json").read_text())
    assert data[0]["ok"] and data[0]["title"] == "check loss"


def test_a_wrong_rule_exits_one(tmp_path, capsys):
    path = _module(tmp_path)
    assert main([f"{path}:uses_double", "--randn", "4"]) == 1
    assert "culprit" in capsys.readouterr().out
    assert main([f"{path}:double", "--randn", "4", "--rule", "--profile", "interface"]) == 0


def test_complex_arguments(tmp_path, capsys):
    path = _module(tmp_path)
    assert main([f"{path}:real_times_imag", "--randn", "4", "--complex", "--json", str(tmp_path / "c.json")]) == 0
    report = json.loads((tmp_path / "c.json").read_text())[0]
    assert report["ok"] and {c["name"]: c["status"] for c in report["checks"]}["program.dot_product"] == "pass"
    # a real-valued function of a complex variable is not holomorphic
    assert main([f"{path}:real_times_imag", "--randn", "4", "--complex", "--holomorphic"]) == 1
    assert "asserted holomorphic" in capsys.readouterr().out


def test_complex_gallery_entries_are_caught(capsys):
    assert main(["--gallery", "--only", "forgotten conj in conj", "PyTorch's convention"]) == 0
    assert "2 of 2 wrong rule(s) caught" in capsys.readouterr().out


def test_usage_errors_exit_two(tmp_path, capsys):
    assert main(["no_such_module_x:f", "--randn", "3"]) == 2
    assert main([f"{_module(tmp_path)}:loss"]) == 2
    assert main(["--gallery", "--only", "no such entry"]) == 2
    assert "error" in capsys.readouterr().err


class _Stream:
    def __init__(self):
        self.text = ""

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_progress_on_a_plain_stream_prints_tenths():
    stream = _Stream()
    progress = Progress(stream)
    for k in range(101):
        progress(k, 100, f"case {k}")
    assert stream.text.count("\n") == 11 and "[" + "=" * 30 + "] 100/100" in stream.text
