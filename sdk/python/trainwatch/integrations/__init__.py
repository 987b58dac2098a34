"""trainwatch beside other libraries: `optuna` (every trial a run, a pruner on trainwatch's
alerts) and `skorch` (a callback that logs epochs and batches). Each module imports its library;
import the one you use (docs/integrations.md)."""
