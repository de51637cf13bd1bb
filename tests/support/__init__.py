"""Helpers the tests share (import them as ``tests.support.<module>``): the spec table of cases
(``cases``, ``specs*``, ``nn_specs``), numbers (``numeric``), optional pieces (``needs``), the
browser (``browser``) and the programs several folders use."""
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]   # the repository
