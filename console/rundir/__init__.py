"""The run folder's records, below everything that acts on runs: ``state.json`` under its lock and
the run ids."""
