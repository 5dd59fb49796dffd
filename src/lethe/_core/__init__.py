"""Records and persistent structures: what a memory is made of, knowing nothing of decay,
ranking, memories or stores."""
