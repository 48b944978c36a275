// Depending on this target links liblua5.4 (see Package.swift); it declares nothing.
#ifndef CLUALINK_H
#define CLUALINK_H
#endif
