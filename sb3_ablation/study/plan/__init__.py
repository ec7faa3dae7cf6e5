"""Study layer: plan."""
