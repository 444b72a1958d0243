from groundswell.shared.cli import main

main()
