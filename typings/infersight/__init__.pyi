# The library's folders (sdk/, collector/, ...) install as infersight.sdk, infersight.collector, ...
# through setup.py's package_dir; mypy checks them under their folder names and cannot follow the
# editable install's import hook, so without these stubs every import of another package's public
# names (from infersight.collector.store import Store) would be Any. Each stub re-exports the
# folder's module: one definition, seen under both names. A public module imported under a new
# name needs its one-line stub here (mypy reports it missing: see pyproject.toml).
