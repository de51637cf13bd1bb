"""Example programs for the docs, the demo and the tests: a small MLP (``programs``) and the
digits CNN (``networks``, imported on its own: it loads scikit-learn's digits)."""
from .programs import mlp_example, mlp_loss, mlp_loss_for  # noqa: F401
