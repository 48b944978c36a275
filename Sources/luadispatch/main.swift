LuaDispatchCommand.main()
