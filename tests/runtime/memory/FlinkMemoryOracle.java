import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * Runs Flink's BashJavaUtils once per input line in ONE JVM (the test's oracle).
 *
 * <p>Each stdin line is a case: arguments separated by TABs (GET_TM_RESOURCE_PARAMS --configDir DIR -D k=v ...).
 * For each case it prints "###CASE n", then BashJavaUtils' own output, then "###ERROR message" (the
 * messages of the exception chain, joined by " <- ") if the calculation failed, then "###END n".
 */
public class FlinkMemoryOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        int n = 0;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            System.out.println("###CASE " + n);
            try {
                org.apache.flink.runtime.util.bash.BashJavaUtils.main(line.split("\t"));
            } catch (Throwable t) {
                StringBuilder message = new StringBuilder();
                for (Throwable cause = t; cause != null; cause = cause.getCause()) {
                    message.append(message.length() == 0 ? "" : " <- ").append(cause);
                }
                System.out.println("###ERROR " + message.toString().replace('\n', ' '));
            }
            System.out.println("###END " + n);
            System.out.flush();
            n++;
        }
    }
}
