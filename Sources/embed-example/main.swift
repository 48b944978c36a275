EmbedExample.main()
