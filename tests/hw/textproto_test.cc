// Placeholder; written by the owner of this file.
