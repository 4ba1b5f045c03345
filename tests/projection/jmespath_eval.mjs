// The JMESPath reference implementation in JavaScript (npm `jmespath`, by
// the specification's authors), for tests/e2e/test_project.py: reads
// {"expression": ..., "data": ...} on standard input, prints the result.
import jmespath from "jmespath";

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const { expression, data } = JSON.parse(input);
  process.stdout.write(JSON.stringify(jmespath.search(data, expression)));
});
