"""The WebKit Inspector Protocol driver: CDP's, with what WIP words differently."""
