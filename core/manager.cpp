// (file being written)
