from shared.cli import main

main()
