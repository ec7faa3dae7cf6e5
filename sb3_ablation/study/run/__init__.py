"""Study layer: run."""
