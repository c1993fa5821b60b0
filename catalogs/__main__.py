from catalogs.core.cli import main

main()
