/* polysci — convolutions and GEMMs at hand-tuned speed without hand tuning.
 * Umbrella header: include this one. See docs/api.md. */
#ifndef POLYSCI_POLYSCI_H
#define POLYSCI_POLYSCI_H

#include "polysci/export.h"
#include "polysci/version.h"
#include "polysci/status.h"
#include "polysci/context.h"
#include "polysci/desc.h"
#include "polysci/schedule.h"
#include "polysci/plan.h"
#include "polysci/wisdom.h"
#include "polysci/cost.h"
#include "polysci/analysis.h"
#include "polysci/expr.h"
#include "polysci/graph.h"
#include "polysci/graph_dl.h"
#include "polysci/iterated.h"

#endif
