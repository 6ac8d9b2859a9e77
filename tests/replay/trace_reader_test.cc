#include "replay/trace_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "replay/sample_costs.h"
#include "replay/trace_records.h"
#include "replay/trace_writer.h"

namespace simreplay::replay {
namespace {

const char* kHeader = R"({"type":"header","schema":"simreplay.trace/1","manifest":{"source":"test"}})";
const char* kSample =
    R"({"type":"sample","rank":0,"epoch":0,"index":3,"batch":0,"worker":1,"t_start_ns":10,"read_ns":100,"decode_ns":200,"augment_ns":300,"read_bytes":1000,"out_bytes":2000,"format":"jpeg","width":64,"height":48,"frames":1})";

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/" + name; }

std::string WriteText(const std::string& name, const std::string& text) {
  std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Reads all records; returns the error message or "" and fills *count.
std::string ReadAll(const std::string& path, int* count, std::vector<std::string>* warnings = nullptr) {
  auto reader = TraceReader::Open(path);
  if (!reader.ok()) return reader.status().message();
  *count = 0;
  TraceRecord record;
  while (true) {
    auto more = (*reader)->Next(&record);
    if (!more.ok()) return more.status().message();
    if (!*more) break;
    ++*count;
  }
  if (warnings) *warnings = (*reader)->warnings();
  return "";
}

TEST(TraceReader, ReadsSampleFields) {
  auto path = WriteText("ok.jsonl", std::string(kHeader) + "\n" + kSample + "\n");
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_EQ((*reader)->header().manifest["source"], "test");
  TraceRecord record;
  auto more = (*reader)->Next(&record);
  ASSERT_TRUE(more.ok() && *more);
  const auto& s = std::get<SampleRecord>(record);
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.worker, 1);
  EXPECT_EQ(s.decode_ns, 200);
  EXPECT_EQ(s.format, "jpeg");
  EXPECT_FALSE(s.unsplit);
}

TEST(TraceReader, SamplePageFaultsAreOptionalNonNegativeAndRoundTrip) {
  std::string with = kSample;
  with.insert(with.size() - 1, R"(,"cpu_ns":900,"minflt":240)");
  auto reader =
      TraceReader::Open(WriteText("faults.jsonl", std::string(kHeader) + "\n" + with + "\n" + kSample + "\n"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  TraceRecord record;
  ASSERT_TRUE(*(*reader)->Next(&record));
  EXPECT_EQ(std::get<SampleRecord>(record).minflt, 240);
  EXPECT_EQ(ToJson(record)["minflt"], 240);
  ASSERT_TRUE(*(*reader)->Next(&record));
  EXPECT_EQ(std::get<SampleRecord>(record).minflt, -1);
  EXPECT_FALSE(ToJson(record).contains("minflt"));
  std::string negative = with;
  negative.replace(negative.find("\"minflt\":240"), 12, "\"minflt\":-3");
  int n = 0;
  std::string err = ReadAll(WriteText("faultneg.jsonl", std::string(kHeader) + "\n" + negative + "\n"), &n);
  EXPECT_NE(err.find("faultneg.jsonl:2: field 'minflt' must be >= 0"), std::string::npos) << err;
}

TEST(TraceReader, StepCpuAndAcceleratorPartsAreOptionalAndRoundTrip) {
  const std::string with = R"({"type":"step","rank":0,"step":2,"t_start_ns":5,"compute_ns":70,"comm_ns":3,)"
                           R"("step_ns":73,"micro_batches":1,"cpu_ns":16,"accel_ns":50})";
  const std::string without = R"({"type":"step","rank":0,"step":3,"t_start_ns":5,"compute_ns":70,"comm_ns":3,)"
                              R"("step_ns":73,"micro_batches":1})";
  auto reader = TraceReader::Open(WriteText("steps.jsonl", std::string(kHeader) + "\n" + with + "\n" + without + "\n"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  TraceRecord record;
  ASSERT_TRUE(*(*reader)->Next(&record));
  const auto first = std::get<StepRecord>(record);
  EXPECT_EQ(first.cpu_ns, 16);
  EXPECT_EQ(first.accel_ns, 50);
  EXPECT_EQ(ToJson(record)["cpu_ns"], 16);
  ASSERT_TRUE(*(*reader)->Next(&record));
  EXPECT_EQ(std::get<StepRecord>(record).cpu_ns, -1);
  EXPECT_FALSE(ToJson(record).contains("cpu_ns"));
  std::string negative = with;
  negative.replace(negative.find("\"cpu_ns\":16"), 11, "\"cpu_ns\":-1");
  int n = 0;
  std::string err = ReadAll(WriteText("stepneg.jsonl", std::string(kHeader) + "\n" + negative + "\n"), &n);
  EXPECT_NE(err.find("stepneg.jsonl:2: field 'cpu_ns' must be >= 0"), std::string::npos) << err;
}

TEST(TraceReader, WorkerMainThreadCpuIsOptionalAndRoundTrips) {
  const std::string base = R"({"type":"worker","rank":0,"worker":0,"pid":7,"t_ns":5,"rss_bytes":1,"pss_bytes":1,)"
                           R"("cpu_ns":900,"io_read_bytes":0)";
  const std::string with = base + R"(,"main_thread_cpu_ns":700})";
  auto reader = TraceReader::Open(WriteText("workers.jsonl", std::string(kHeader) + "\n" + with + "\n" + base + "}\n"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  TraceRecord record;
  ASSERT_TRUE(*(*reader)->Next(&record));
  EXPECT_EQ(std::get<WorkerRecord>(record).main_thread_cpu_ns, 700);
  EXPECT_EQ(ToJson(record)["main_thread_cpu_ns"], 700);
  ASSERT_TRUE(*(*reader)->Next(&record));
  EXPECT_EQ(std::get<WorkerRecord>(record).main_thread_cpu_ns, -1);
  EXPECT_FALSE(ToJson(record).contains("main_thread_cpu_ns"));
  int n = 0;
  std::string err = ReadAll(
      WriteText("workerneg.jsonl", std::string(kHeader) + "\n" + base + R"(,"main_thread_cpu_ns":-2})" + "\n"), &n);
  EXPECT_NE(err.find("workerneg.jsonl:2: field 'main_thread_cpu_ns' must be >= 0"), std::string::npos) << err;
}

TEST(TraceReader, RejectsWrongSchemaVersion) {
  auto path = WriteText("v2.jsonl", R"({"type":"header","schema":"simreplay.trace/2","manifest":{}})"
                                    "\n");
  int n = 0;
  std::string err = ReadAll(path, &n);
  EXPECT_NE(err.find("v2.jsonl:1: wrong schema version"), std::string::npos) << err;
}

TEST(TraceReader, RejectsMalformedJsonWithLine) {
  auto path = WriteText("bad.jsonl", std::string(kHeader) + "\n" + kSample + "\n{not json}\n" + kSample + "\n");
  int n = 0;
  std::string err = ReadAll(path, &n);
  EXPECT_NE(err.find("bad.jsonl:3: malformed JSON"), std::string::npos) << err;
}

TEST(TraceReader, RejectsNegativeDuration) {
  std::string line = kSample;
  line.replace(line.find("\"decode_ns\":200"), 15, "\"decode_ns\":-5");
  auto path = WriteText("neg.jsonl", std::string(kHeader) + "\n" + line + "\n");
  int n = 0;
  std::string err = ReadAll(path, &n);
  EXPECT_NE(err.find("neg.jsonl:2: field 'decode_ns' must be >= 0"), std::string::npos) << err;
}

TEST(TraceReader, RejectsNaN) {
  std::string line = kSample;
  line.replace(line.find("\"decode_ns\":200"), 15, "\"decode_ns\":NaN");
  auto path = WriteText("nan.jsonl", std::string(kHeader) + "\n" + line + "\n" + kSample + "\n");
  int n = 0;
  std::string err = ReadAll(path, &n);
  EXPECT_NE(err.find("nan.jsonl:2: NaN or infinite"), std::string::npos) << err;
}

TEST(TraceReader, RejectsMissingAndIllTypedFields) {
  std::string missing = kSample;
  missing.replace(missing.find("\"read_ns\":100,"), 14, "");
  std::string typed = kSample;
  typed.replace(typed.find("\"index\":3"), 9, "\"index\":\"3\"");
  int n = 0;
  EXPECT_NE(ReadAll(WriteText("m.jsonl", std::string(kHeader) + "\n" + missing + "\n"), &n)
                .find("m.jsonl:2: missing required field 'read_ns'"),
            std::string::npos);
  EXPECT_NE(ReadAll(WriteText("t.jsonl", std::string(kHeader) + "\n" + typed + "\n"), &n)
                .find("t.jsonl:2: field 'index' must be an integer, found string"),
            std::string::npos);
}

TEST(TraceReader, RejectsHugeNumbers) {
  std::string line = kSample;
  line.replace(line.find("\"read_bytes\":1000"), 17, "\"read_bytes\":99999999999999999999999");
  int n = 0;
  std::string err = ReadAll(WriteText("huge.jsonl", std::string(kHeader) + "\n" + line + "\n"), &n);
  EXPECT_NE(err.find("huge.jsonl:2: field 'read_bytes' is too large"), std::string::npos) << err;
}

TEST(TraceReader, AcceptsTruncatedFinalLineWithWarning) {
  std::string text = std::string(kHeader) + "\n" + kSample + "\n" + std::string(kSample).substr(0, 40);
  int n = 0;
  std::vector<std::string> warnings;
  EXPECT_EQ(ReadAll(WriteText("cut.jsonl", text), &n, &warnings), "");
  EXPECT_EQ(n, 1);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("cut.jsonl:3: truncated final line ignored"), std::string::npos);
}

TEST(TraceReader, SkipsUnknownTypesWithOneWarning) {
  std::string text = std::string(kHeader) + "\n" +
                     R"({"type":"future","x":1})"
                     "\n"
                     R"({"type":"future","x":2})"
                     "\n" +
                     kSample + "\n";
  int n = 0;
  std::vector<std::string> warnings;
  EXPECT_EQ(ReadAll(WriteText("unk.jsonl", text), &n, &warnings), "");
  EXPECT_EQ(n, 1);
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(TraceReader, KeepsUnknownFieldsIgnored) {
  std::string line = kSample;
  line.insert(line.size() - 1, R"(,"new_field":{"a":[1,2]})");
  int n = 0;
  EXPECT_EQ(ReadAll(WriteText("extra.jsonl", std::string(kHeader) + "\n" + line + "\n"), &n), "");
  EXPECT_EQ(n, 1);
}

TEST(TraceReader, EmptyFileIsAnError) {
  int n = 0;
  EXPECT_NE(ReadAll(WriteText("empty.jsonl", ""), &n).find("empty.jsonl:1: empty file"), std::string::npos);
}

TEST(TraceReader, MissingFileNamesIt) {
  int n = 0;
  EXPECT_NE(ReadAll(TempPath("does-not-exist.jsonl"), &n).find("does-not-exist.jsonl: cannot open"), std::string::npos);
}

TEST(TraceWriter, RoundTripsThroughGzip) {
  std::string path = TempPath("round.jsonl.gz");
  TraceHeader header;
  header.manifest = {{"source", "test"}};
  auto writer = TraceWriter::Create(path, header);
  ASSERT_TRUE(writer.ok());
  SampleRecord s;
  s.index = 7;
  s.decode_ns = 123;
  s.format = "png";
  s.unsplit = true;
  ASSERT_TRUE((*writer)->Write(s).ok());
  BatchRecord b;
  b.size = 1;
  b.wait_ns = 55;
  ASSERT_TRUE((*writer)->Write(b).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  auto costs = LoadSampleCosts({path});
  ASSERT_TRUE(costs.ok()) << costs.status().message();
  ASSERT_EQ(costs->samples.size(), 1u);
  EXPECT_DOUBLE_EQ(costs->samples[0].decode_s, 123e-9);
  EXPECT_TRUE(costs->samples[0].unsplit);
  EXPECT_EQ(costs->formats[0], "png");
  EXPECT_DOUBLE_EQ(costs->measured.mean_wait_s, 55e-9);
}

TEST(TraceWriter, LeavesNoFileWithoutClose) {
  std::string path = TempPath("abandoned.jsonl");
  std::remove(path.c_str());
  {
    auto writer = TraceWriter::Create(path, TraceHeader{});
    ASSERT_TRUE(writer.ok());
  }
  EXPECT_FALSE(std::ifstream(path).good());
}

TEST(TraceReader, ReadsPrefixOfCutGzipStream) {
  // A killed gzip writer: compress a trace then chop the stream in the middle.
  std::string text = std::string(kHeader) + "\n";
  for (int i = 0; i < 2000; ++i) text += std::string(kSample) + "\n";
  std::string full = TempPath("full.jsonl.gz");
  gzFile out = gzopen(full.c_str(), "wb");
  gzwrite(out, text.data(), static_cast<unsigned>(text.size()));
  gzclose(out);
  std::ifstream in(full, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string cut_path = WriteText("cut.jsonl.gz", bytes.substr(0, bytes.size() / 2));
  int n = 0;
  std::vector<std::string> warnings;
  EXPECT_EQ(ReadAll(cut_path, &n, &warnings), "");
  EXPECT_GT(n, 10);
  EXPECT_LT(n, 2000);
  EXPECT_FALSE(warnings.empty());
}

TEST(SampleCosts, KinetoStyleTraceSpreadsBatchLoad) {
  // No sample records: each batch's load (wait + collate) is spread evenly over its samples.
  std::string text =
      std::string(kHeader) + "\n" +
      R"({"type":"batch","rank":0,"epoch":0,"batch":0,"worker":-1,"size":4,"collate_ns":0,"t_ready_ns":0,"wait_ns":400,"pin_ns":0,"h2d_ns":0,"h2d_bytes":0})"
      "\n";
  auto costs = LoadSampleCosts({WriteText("kin.jsonl", text)});
  ASSERT_TRUE(costs.ok()) << costs.status().message();
  ASSERT_EQ(costs->samples.size(), 4u);
  EXPECT_DOUBLE_EQ(costs->samples[0].decode_s, 100e-9);
  EXPECT_TRUE(costs->samples[0].unsplit);
}

// Regression (issue 13): a number no double holds made nlohmann throw out_of_range 406, which is not a
// parse_error, so it escaped ParseJson and aborted `simreplay simulate` instead of naming the line.
TEST(TraceReader, RegressionNumberOverflowIsFileLineErrorNotAbort) {
  std::string line = kSample;
  line.replace(line.find("\"read_ns\":100"), 14, "\"read_ns\":1e400");
  int n = 0;
  std::string err =
      ReadAll(WriteText("overflow.jsonl", std::string(kHeader) + "\n" + line + "\n" + kSample + "\n"), &n);
  EXPECT_NE(err.find("overflow.jsonl:2: a number out of range: 1e400"), std::string::npos) << err;
  // The same in the header line.
  err = ReadAll(
      WriteText("overflow_header.jsonl", R"({"type":"header","schema":"simreplay.trace/1","manifest":{"x":-1e999}})"
                                         "\n"),
      &n);
  EXPECT_NE(err.find("overflow_header.jsonl:1: a number out of range: -1e999"), std::string::npos) << err;
}

// Regression (issue 13): a header whose "type" is not a string made json::value() throw type_error.
TEST(TraceReader, RegressionNonStringHeaderTypeIsAnError) {
  int n = 0;
  std::string err = ReadAll(WriteText("typed_header.jsonl", "{\"type\":1,\"schema\":\"simreplay.trace/1\"}\n"), &n);
  EXPECT_NE(err.find("typed_header.jsonl:1: the first record must be"), std::string::npos) << err;
}

}  // namespace
}  // namespace simreplay::replay
