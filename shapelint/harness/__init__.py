"""Dynamic harness: replay a model under torch.compile in a subprocess and blame each event."""
