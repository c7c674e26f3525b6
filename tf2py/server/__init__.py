"""The buffer server and its client: remote lookup_transform goals. Uses buffer and transport."""
