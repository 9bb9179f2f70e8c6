"""Building and running workers: the activities' host, its converters, the scripted model, the dev server."""
