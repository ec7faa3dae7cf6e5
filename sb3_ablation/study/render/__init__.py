"""Study layer: render."""
