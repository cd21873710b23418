"""Writing the index: the one ``IndexWriter``, its thread and process transports, the wire
between them, the batch check and the fold into rows (the ingest actor that feeds it is the
replica's: ``worker.replica.ingest_actor``)."""
