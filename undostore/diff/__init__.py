"""diff layer."""
