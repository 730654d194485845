// `xferlab-probe programs --device N --out DIR [--evaluations K,K,..]`: builds every OpenCL program
// the probe runs on device N from its embedded source (src/xferlab/kernels/*.cl) with every set of
// build options the commands use, and writes each one's CL_PROGRAM_BINARIES to DIR, named by
// program_file() (programs.hpp), with DIR/manifest.json naming the device, its driver and each
// program's options. `--program DIR` on launch, kernels, collab and deceval, and the offload runtime's
// OpenCL backend (`xferlab runtime bench --program DIR`: program "runtime", native/runtime/
// runtime_program.hpp), then load them instead of building (issue 26). One JSON record per program
// written on stdout.
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "args.hpp"
#include "cl_device.hpp"
#include "collab.hpp"
#include "json.hpp"
#include "kernels_cl.hpp"
#include "probe.hpp"
#include "programs.hpp"
#include "../runtime/runtime_program.hpp"

namespace xferlab {

int run_programs(Args& args) {
  using namespace cl;
  const int device = static_cast<int>(args.integer("device", 0, 0, 4096));
  const std::string out = args.text("out", "");
  const auto evaluations = args.integers("evaluations", "1", 1, 4096);
  args.finish();
  if (out.empty()) throw BadArgument("--out DIR is required: the folder the binaries and manifest.json go to");
  struct stat st {};
  if (stat(out.c_str(), &st) == 0 ? !S_ISDIR(st.st_mode) : mkdir(out.c_str(), 0777) != 0)
    throw BadArgument("--out '" + out + "' is not a folder that can be made; allowed: a new or existing folder");

  ClDevice info(device);
  cl_ulong fp64 = 0;
  info.api().GetDeviceInfo(info.id(), CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, nullptr);
  cl_device_type type = 0;
  info.query(CL_DEVICE_TYPE, sizeof type, &type, "CL_DEVICE_TYPE");
  struct Item {
    std::string name;
    const char* source;
    std::string options;
    std::vector<std::string> tried;  // several option sets: the first that builds (the runtime's)
  };
  std::vector<Item> items = {{"launch", sources::k_launch, "", {}}};
  for (const char* t : {"float", "double"}) {
    if (std::string(t) == "double" && !fp64) continue;  // as kernels.cpp: no double without cl_khr_fp64
    for (int w : {1, 2, 4, 8, 16}) items.push_back({"stream", sources::k_stream, kcl::options(t, w), {}});
  }
  if (fp64)  // DecEval integrates in double
    for (long long k : evaluations)
      items.push_back({"deceval", sources::k_deceval,
                       deceval_options(type & CL_DEVICE_TYPE_CPU, static_cast<int>(k)), {}});

  {  // collab: the first option set the device takes, as collab.cpp tries them (build_kernels)
    ClDevice dev(device);
    dev.open();
    std::string options, atomics, path;
    collab::build_kernels(dev, options, atomics, path);
    items.push_back({"collab", sources::k_collab, options, {}});
  }
  items.push_back({"runtime", kKernelSource, "",  // the offload runtime's OpenCL backend, as it tries them
                   std::vector<std::string>(std::begin(runtime::kRuntimeOptions), std::end(runtime::kRuntimeOptions))});
  std::string programs;
  for (Item& item : items) {
    ClDevice dev(device);
    dev.open();
    if (item.tried.empty()) dev.build(item.name, item.source, {item.options});
    else item.options = item.tried[dev.build(item.name, item.source, item.tried)];
    const std::string bytes = program_binary(dev.api(), dev.program());
    const std::string file = program_file(item.name, item.options);
    std::ofstream f(out + "/" + file, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f.flush()) throw std::runtime_error("cannot write " + out + "/" + file);
    JsonLine entry;
    entry.str("program", item.name).str("options", item.options).str("file", file).integer("bytes", bytes.size());
    programs += (programs.empty() ? "" : ",") + entry.text();
    JsonLine().str("probe", "programs").str("record", "program_file").str("program", item.name)
        .str("options", item.options).str("file", file).integer("bytes", static_cast<long long>(bytes.size())).emit();
  }
  const std::string manifest = JsonLine()
                                   .str("format", "xferlab-programs/1")
                                   .integer("device_index", device)
                                   .str("device_name", info.text(CL_DEVICE_NAME))
                                   .str("driver_version", info.text(CL_DRIVER_VERSION))
                                   .str("device_version", info.text(CL_DEVICE_VERSION))
                                   .raw("programs", "[" + programs + "]")
                                   .text();
  std::ofstream m(out + "/manifest.json");
  m << manifest << "\n";
  if (!m.flush()) throw std::runtime_error("cannot write " + out + "/manifest.json");
  return 0;
}

}  // namespace xferlab
