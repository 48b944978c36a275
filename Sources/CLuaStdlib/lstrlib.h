// The string library: Lua 5.4.4's lstrlib.c, split at its sections into lstrlib.c (basic
// functions, metamethods, opening), lstrlib_match.c (pattern matching, one unit as upstream's,
// its functions static, which the compiler specializes), lstrlib_format.c and lstrlib_pack.c,
// with one change: the loops that can run long in C look for an end (steps.h): the matcher
// where it fails and tries again (backtracking, a new start, a '?' not taken), balances and
// back-references, string.rep. Each change is marked "LuaDispatch"; everything else is
// upstream's text. This header is what the parts share.
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
#ifndef LD_STDLIB_LSTRLIB_H
#define LD_STDLIB_LSTRLIB_H

/*
** $Id: lstrlib.c $
** Standard library for string operations and pattern-matching
** See Copyright Notice in lua.h
*/

#define LUA_LIB

/* LuaDispatch: lprefix.h (not installed) defines nothing this code needs on Linux */


#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lua5.4/lua.h>

#include <lua5.4/lauxlib.h>
#include <lua5.4/lualib.h>


/*
** maximum number of captures that a pattern can do during
** pattern-matching. This limit is arbitrary, but must fit in
** an unsigned char.
*/
#if !defined(LUA_MAXCAPTURES)
#define LUA_MAXCAPTURES		32
#endif


/* macro to 'unsign' a character */
#define uchar(c)	((unsigned char)(c))


/*
** Some sizes are better limited to fit in 'int', but must also fit in
** 'size_t'. (We assume that 'lua_Integer' cannot be smaller than 'int'.)
*/
#define MAX_SIZET	((size_t)(~(size_t)0))

#define MAXSIZE  \
	(sizeof(size_t) < sizeof(int) ? MAX_SIZET : (size_t)(INT_MAX))



#include "steps.h"

/* LuaDispatch: what one part defines and another uses (renamed: not the process's symbols) */
#define posrelatI ld_strlib_posrelatI
#define getendpos ld_strlib_getendpos
size_t posrelatI (lua_Integer pos, size_t len);
size_t getendpos (lua_State *L, int arg, lua_Integer def, size_t len);
int str_find (lua_State *L);
int str_match (lua_State *L);
int gmatch (lua_State *L);
int str_gsub (lua_State *L);
int str_format (lua_State *L);
int str_pack (lua_State *L);
int str_packsize (lua_State *L);
int str_unpack (lua_State *L);

#define CAP_UNFINISHED	(-1)
#define CAP_POSITION	(-2)


typedef struct MatchState {
  const char *src_init;  /* init of source string */
  const char *src_end;  /* end ('\0') of source string */
  const char *p_end;  /* end ('\0') of pattern */
  lua_State *L;
  int matchdepth;  /* control for recursive depth (to avoid C stack overflow) */
  unsigned char level;  /* total number of captures (finished or unfinished) */
  struct {
    const char *init;
    ptrdiff_t len;
  } capture[LUA_MAXCAPTURES];
} MatchState;




/* maximum recursion depth for 'match' */
#if !defined(MAXCCALLS)
#define MAXCCALLS	200
#endif


#define L_ESC		'%'
#define SPECIALS	"^$*+?.([%-"



#endif
