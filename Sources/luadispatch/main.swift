CLI.main()
