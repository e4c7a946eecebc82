from kgeval.cli import main

main()
