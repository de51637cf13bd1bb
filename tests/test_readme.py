"""The README's ten-line example prints what the README says it prints."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys
from tests.support import ROOT



def test_the_ten_line_example_prints_the_listing_shown():
    text = ROOT.joinpath("README.md").read_text()
    section = text[text.index("## Ten lines"):]
    code, shown = re.search(r"```python\n(.*?)```\n\n```\n(.*?)```", section, re.S).groups()
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert run.stdout == shown
