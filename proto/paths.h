/* paths.h — where garudad listens by default (the contract's one copy). The daemon's
 * --socket/--control-socket and the clients' $GARUDA_SOCKET / --socket override them.
 * garuda.h's public GARUDA_DEFAULT_SOCKET repeats the client path for the public API
 * (the public header includes nothing of proto/); client/client.c checks at compile
 * time that the two agree. */
#pragma once

#define GARUDA_SOCKET_DIR "/run/garuda"
#define GARUDA_SOCKET_PATH GARUDA_SOCKET_DIR "/garuda.sock"
#define GARUDA_CONTROL_SOCKET_PATH GARUDA_SOCKET_DIR "/control.sock"
