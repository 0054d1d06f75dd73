// Turning a program built in static mode (or traced by to_static) into an inference model: only the
// forward ops that the fetch targets need, fed from feed ops and fetched by fetch ops, as Paddle's
// save_inference_model writes it.
#pragma once

#include <oar/ir/program.h>

#include <string>
#include <vector>

namespace oar::ir {

// The pruned program: block 0 keeps the forward ops (op_role 0) that `fetch_names` depend on, stopping
// at `feed_names`; variables no kept op names are dropped (feeds and fetches stay); a feed op per feed
// (col = position) is prepended and a fetch op per fetch appended, with the "feed"/"fetch" variables.
// Programs with sub-blocks keep the ops whose sub-blocks are reachable. Throws kInvalidArgument for an
// unknown feed or fetch name, or a fetch that needs a variable neither fed, persistable nor computed.
Program prepare_inference_program(const Program& program, const std::vector<std::string>& feed_names,
                                  const std::vector<std::string>& fetch_names);

// Names of the persistable variables a program reads (sorted), i.e. what its .pdiparams holds.
std::vector<std::string> persistable_inputs(const Program& program);

}  // namespace oar::ir
