"""Writing the index: the one ``IndexWriter``, its thread and process transports, the wire
between them, the batch check and the fold into rows, and the ingest actor."""
