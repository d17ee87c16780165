/* The planning and execution half of include/polysci/graph.h, referenced
 * weakly: a library that has the builder but not (yet) the engine still
 * links these tests, and ge_engine_present() tells them to skip the parts
 * that plan and execute. Weak references resolve against the shared library
 * (and against object files linked whole, as the fuzzer links the library);
 * a test linked with a static archive must reference the engine strongly
 * elsewhere, or the archive member would not be pulled in. */
#ifndef PS_TESTS_GRAPH_ENGINE_H
#define PS_TESTS_GRAPH_ENGINE_H

#include "polysci/graph.h"

#pragma weak ps_graph_options_init
#pragma weak ps_graph_plan_create
#pragma weak ps_graph_plan_destroy
#pragma weak ps_graph_plan_workspace_size
#pragma weak ps_graph_execute
#pragma weak ps_graph_plan_describe
#pragma weak ps_graph_plan_get_stats

static inline int ge_engine_present(void)
{
    return ps_graph_options_init && ps_graph_plan_create && ps_graph_plan_destroy && ps_graph_plan_workspace_size &&
           ps_graph_execute && ps_graph_plan_describe && ps_graph_plan_get_stats;
}

#endif
