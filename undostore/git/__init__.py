"""git's formats, with no knowledge of a store: object ids and headers, the tree codec, pack
records and indexes, reading and writing packs. Imports nothing of undostore but `errors` and
`platform`."""
