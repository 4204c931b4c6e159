/* stoker/stoker.h: the umbrella header; include this one.
 * See status.h (errors), version.h, topology.h (topology, planner, binding), pipeline.h
 * (pipelines, operators, batches) and dlpack.h (zero-copy export). */
#ifndef STOKER_STOKER_H
#define STOKER_STOKER_H
#include "stoker/status.h"
#include "stoker/version.h"
#include "stoker/topology.h"
#include "stoker/pipeline.h"
#include "stoker/dlpack.h"
#endif
