"""pytest plugin (entry point ``pytest11``): assert a model does not recompile.

Loading it never imports torch; the fixture and marker import it when a test uses them."""

from __future__ import annotations


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "no_recompiles(model, inputs, batch_sizes, seq_lens=None, max_compiles=2, "
                   "dynamic='auto', backend='eager'): replay the model at these shapes under "
                   "torch.compile and fail if it compiles more often than max_compiles")
