// The standard library's blocking functions, with their waits made without the interpreter
// (blocking.c): io.read, io.lines, io.write, io.popen, the read, lines and write methods of
// files, and os.execute. The code is Lua 5.4.4's liolib.c and loslib.c, changed only where a call
// could block; results and messages are theirs. What the files of this folder share: a stream
// one call reads or writes, and glibc's view of its buffer.
//
// Lua 5.4.4: Copyright (C) 1994-2022 Lua.org, PUC-Rio.
//
// Permission is hereby granted, free of charge, to any person obtaining a copy of this software
// and associated documentation files (the "Software"), to deal in the Software without
// restriction, including without limitation the rights to use, copy, modify, merge, publish,
// distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the
// Software is furnished to do so, subject to the following conditions:
//
// The above copyright notice and this permission notice shall be included in all copies or
// substantial portions of the Software.
//
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING
// BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
// NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
// DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
// OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
#ifndef LD_STDLIB_STREAM_H
#define LD_STDLIB_STREAM_H

#include <stdio.h>
#include <lua5.4/lua.h>
#include <lua5.4/lauxlib.h>
#include "ld_blocking.h"

#define IO_PREFIX "_IO_"
#define IOPREF_LEN (sizeof(IO_PREFIX) / sizeof(char) - 1)
#define IO_INPUT (IO_PREFIX "input")
#define IO_OUTPUT (IO_PREFIX "output")

typedef luaL_Stream LStream;

#define tolstream(L) ((LStream *)luaL_checkudata(L, 1, LUA_FILEHANDLE))
#define isclosed(p) ((p)->closef == NULL)

/// Whether calls on a stream may block: unknown until its buffer first runs out during a call
/// (then one fstat says), never for regular files and block devices (read and written exactly
/// as by liolib), maybe for pipes, sockets, terminals and other character devices.
enum { LD_KIND_UNKNOWN, LD_KIND_NEVER, LD_KIND_MAY_BLOCK };

/// One call's stream. The handle `p` is looked at again after every wait: another block may have
/// closed it meanwhile.
typedef struct ld_stream {
    lua_State *L;
    LStream *p;
    int kind;
    int terminal; /* written between the REPL's terminal hooks (io_write.c) */
} ld_stream;

// glibc's FILE flags (libio/libio.h), which its public struct_FILE.h leaves out.
#define LD_IO_UNBUFFERED 0x0002
#define LD_IO_NO_READS 0x0004
#define LD_IO_NO_WRITES 0x0008
#define LD_IO_EOF_SEEN 0x0010
#define LD_IO_IN_BACKUP 0x0100
#define LD_IO_LINE_BUF 0x0200
#define LD_IO_CURRENTLY_PUTTING 0x0800

/// Bytes read into `f`'s buffer and not consumed yet (a read from the buffer never blocks).
/// In glibc's put-back area, the rest of its buffer may still wait: counted as one.
static inline size_t ld_buffered_input(FILE *f) {
    if (f->_IO_read_ptr < f->_IO_read_end) return (size_t)(f->_IO_read_end - f->_IO_read_ptr);
    return (f->_flags & LD_IO_IN_BACKUP) ? 1 : 0;
}

/// LD_KIND_NEVER or LD_KIND_MAY_BLOCK for `f`'s descriptor (errno kept).
int ld_stream_kind(FILE *f);
/// `s`'s FILE, once reading from it would not block: waits without the interpreter first if its
/// buffer is empty and its descriptor has nothing to read. Raises if `s` was closed meanwhile.
/// NULL when Ctrl-C ended the wait: the read ends there, the FILE's error set, errno EINTR.
FILE *ld_ready_to_read(ld_stream *s);
/// Raises liolib's error if another block closed `s` while this one waited.
void ld_stream_check_open(ld_stream *s);

/// liolib's tofile, returning the handle.
static inline LStream *ld_tostream(lua_State *L) {
    LStream *p = tolstream(L);
    if (isclosed(p)) luaL_error(L, "attempt to use a closed file");
    return p;
}

/// liolib's getiofile, returning the handle (left on the stack).
static inline LStream *ld_getiostream(lua_State *L, const char *findex) {
    lua_getfield(L, LUA_REGISTRYINDEX, findex);
    LStream *p = (LStream *)lua_touserdata(L, -1);
    if (isclosed(p)) luaL_error(L, "default %s file is closed", findex + IOPREF_LEN);
    return p;
}

#endif
