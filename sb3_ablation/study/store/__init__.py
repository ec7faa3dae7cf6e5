"""Study layer: store."""
