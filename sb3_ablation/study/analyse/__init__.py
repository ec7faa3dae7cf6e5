"""Study layer: analyse."""
