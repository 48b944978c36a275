// Depending on this target links liblua5.4: the executables, the tests and Swift hosts.
// The Lua C module does not (it uses the symbols of the interpreter that loads it).
#include "clualink.h"
