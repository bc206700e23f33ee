"""Language models over surfaces that the ranking weighs beside the neural model."""
