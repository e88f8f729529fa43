"""shapelint: find the code that makes torch.compile recompile, specialize or graph-break.

The static pass (``shapelint.static``) never imports torch or the analysed code; the
harness (``shapelint.harness``) and the pytest plugin import torch lazily.
"""

__version__ = "0.1.0"
