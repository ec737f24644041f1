/*
** sim_asan.h: whether this build runs under AddressSanitizer (gcc defines
** __SANITIZE_ADDRESS__, clang answers __has_feature). Caches that keep
** freed blocks for reuse switch themselves off under it, since a kept
** block would hide a use after free; code that poisons memory it keeps
** includes <sanitizer/asan_interface.h> when SIM_ASAN is 1.
*/
#ifndef SIM_ASAN_H
#define SIM_ASAN_H

#if defined(__SANITIZE_ADDRESS__)
#define SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIM_ASAN 1
#endif
#endif
#ifndef SIM_ASAN
#define SIM_ASAN 0
#endif

#endif
