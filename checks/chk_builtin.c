/*
** chk_builtin.c: the built-in checkers, in the order the core calls them.
**
** The only file that names the checker classes. The order is part of the
** behaviour: violations found by the same record appear in this order, and
** recovery_finishes' end-of-run pass runs before no_wedge's. Each class is
** defined in its own file (chk_reg.h describes the hooks).
*/
#include "checks/chk_internal.h"

extern const chk_class chk__recovery_class; /* chk_recovery.c: recovery_finishes windows */
extern const chk_class chk__fiber_class;    /* chk_fiber.c */
extern const chk_class chk__toolrun_class;  /* chk_toolrun.c */
extern const chk_class chk__actor_class;    /* chk_actor.c: no_wedge, keepalive_holds */
extern const chk_class chk__exec_class;     /* chk_executor.c: checkpoint_contract */
extern const chk_class chk__thread_class;   /* chk_thread.c: thread store */
extern const chk_class chk__chat_class;     /* chk_chat.c: chat turns */

const chk_class *const chk__builtin[] = {
    &chk__recovery_class, &chk__fiber_class, &chk__toolrun_class, &chk__actor_class,
    &chk__exec_class,     &chk__thread_class, &chk__chat_class,   NULL};
