"""The README's ten-line example prints what the README says it prints, and its API section
names exactly the public names of ``ad`` and ``tapeviz`` (their ``__all__``)."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

import ad
import tapeviz
from tests.support import ROOT


def test_the_ten_line_example_prints_the_listing_shown():
    text = ROOT.joinpath("README.md").read_text()
    section = text[text.index("## Ten lines"):]
    code, shown = re.search(r"```python\n(.*?)```\n\n```\n(.*?)```", section, re.S).groups()
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert run.stdout == shown


@pytest.mark.parametrize("package", [ad, tapeviz], ids=lambda p: p.__name__)
def test_the_api_section_names_the_public_api(package):
    text = ROOT.joinpath("README.md").read_text()
    section = text[text.index("## API"):]
    section = section[:section.index("\n## ", 1)]
    paragraph = next(p for p in section.split("\n\n") if p.startswith(f"**`{package.__name__}`**"))
    paragraph = paragraph.split(". ")[0] if package is ad else paragraph   # ad's ends naming subpackages
    named = set(re.findall(r"`([A-Za-z_]\w*)`", paragraph)) - {package.__name__}
    assert named == set(package.__all__), (sorted(named - set(package.__all__)), sorted(set(package.__all__) - named))
    assert all(hasattr(package, n) for n in package.__all__)
