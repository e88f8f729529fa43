"""The built-in rule catalogue, installed as ``shapelint.rules``.

One module per rule; each defines one :class:`shapelint.api.Rule` subclass with its code,
documentation and VALID/INVALID examples. Adding a rule touches one file.
"""
