"""The exception tree of the worker and its contract: one root per package boundary.

Nothing is defined here: this docstring is the one map (``tests/test_error_tree.py``
checks that every exception class of ``worker`` and ``contracts`` descends from a root
below and is named here). Each root lives in its own package, so no layer imports a
higher one to raise its errors::

    contracts.errors.SessionQueryClientError     requester side: transport, protocol
    ├── contracts.client.NoWorkerError
    ├── contracts.client.ReplyTimeoutError
    ├── contracts.spill_fetch.SpillFetchError
    │   └── contracts.spill_fetch.SpillDigestMismatch
    ├── contracts.spill_crypto.SpillDecryptError            (also a ValueError)
    ├── contracts.partitions.PartitionSetError              (also a ValueError)
    └── contracts.streams.UnpartitionedStream               a stream of protocol 1

    worker.store.errors.StoreError               the store; text internal
    ├── GenerationChanged, InvalidQuery, InvalidCursor       queries
    ├── IndexFileError                                       the index file
    │   ├── CorruptIndex, IndexLocked, IndexFileReplaced
    ├── SchemaVersionError
    ├── SnapshotRefused                                      a snapshot that does not check
    ├── EmbedderUnavailable                                  semantic falls behind, lexical goes on
    │   └── worker.store.search.semantic.remote._Transient   private: the ones retried
    ├── BatchNotAttempted, IndexWriteStopped                 the write path
    ├── WriterProcessError
    │   └── IndexFileLost                                    (also an IndexWriteStopped)
    └── worker.store.sqlite._Stopped                         private: never leaves its module

    worker.signals.ExecutionAborted              cancellation and deadlines, every layer
    ├── ExecutionCancelled                                   exact reason kept
    └── DeadlineExceeded

    worker.tools.definitions.ToolError           a model-facing answer: code + message
    └── worker.tools.titles.TitleMismatch                    NOT_FOUND, fail closed

    worker.failures.RuntimeFailure         operational; told to the operator
    ├── worker.transport.connection.ConnectFailed
    ├── worker.transport.embedded_server.EmbeddedServerError  (also a RuntimeError)
    ├── worker.actors.MailboxFull
    ├── worker.serving.spill.SpillConfigError                 (also a ValueError)
    ├── worker.serving.replies.BadEnvelope
    ├── worker.commands.purge.InvalidDuration                 (also a ValueError)
    ├── worker.settings.ConfigError                           (also a ValueError)
    ├── worker.commands.serve.ServeRefused                    serve cannot start
    ├── worker.serving.search_queue.OverlappingShards         shards that share partitions
    ├── worker.replica.continuity.StreamDiverged
    ├── worker.replica.snapshot_join.SnapshotDownloadFailed   a snapshot not read whole
    ├── worker.commands.partition_plan.PlanError              (also a ValueError)
    ├── worker.commands.partitions.SizesUnavailable           no stream sizes to plan by
    └── worker.ui.client.OperatorError                        an operator reply not ok, or
                                                              none: shown on the ui's page

    worker.importers.publish.ImportFailed        an import cannot go on; told to the user
    ├── worker.importers.registry.UnknownFormat              (also a ValueError)
    └── worker.importers.plugin.UnreadableSource             one source; the others import
        └── worker.importers.vscode_copilot.Refused          a chat file of an unknown version
    worker.retry.RetryStopped                    a retry's stop was set (shared module:
                                                 it imports nothing from worker)

What a model sees: only a ``ToolError``. Every other exception a tool call meets is
turned into one by one declarative table, ``worker.tools.errors.ERROR_TABLE`` (class ->
code and fixed message; the execution signal's own abort is answered first, with its exact
reason): at the provider boundary, ``worker.tools.service_boundary.ServiceBoundary``, for
the store's calls, and for whatever else escapes by the runtime's one outer guard, the
executor (``worker.serving.execution``), through ``worker.tools.model_error``; the
runtime's own failures (``RuntimeFailure``) never reach a reply except as the fixed
``TOOL_FAILED``.
"""
