"""Every ``sessionquery`` subcommand with its flags; ``worker.cli`` only dispatches."""
