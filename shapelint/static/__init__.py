"""Static pass: libcst parse, project index, dataflow, rules. Never imports torch."""
