import java.util.*;
import java.util.jar.*;
import java.lang.reflect.*;

public class ListRestHeaders {
    public static void main(String[] args) throws Exception {
        Class<?> base = Class.forName("org.apache.flink.runtime.rest.handler.RestHandlerSpecification");
        TreeSet<String> out = new TreeSet<>();
        try (JarFile jar = new JarFile(args[0])) {
            for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements();) {
                String n = e.nextElement().getName();
                if (!n.startsWith("org/apache/flink/runtime/rest/") || !n.endsWith("Headers.class") || n.contains("$")) continue;
                String cn = n.substring(0, n.length() - 6).replace('/', '.');
                Class<?> c;
                try { c = Class.forName(cn, false, ListRestHeaders.class.getClassLoader()); } catch (Throwable t) { continue; }
                if (!base.isAssignableFrom(c) || Modifier.isAbstract(c.getModifiers())) continue;
                Object h = null;
                try { Method m = c.getMethod("getInstance"); if (Modifier.isStatic(m.getModifiers())) h = m.invoke(null); } catch (Throwable t) {}
                if (h == null) { try { Constructor<?> k = c.getDeclaredConstructor(); k.setAccessible(true); h = k.newInstance(); } catch (Throwable t) { System.err.println("skip " + cn + " " + t); continue; } }
                Object method = c.getMethod("getHttpMethod").invoke(h);
                Object url = c.getMethod("getTargetRestEndpointURL").invoke(h);
                String resp = "";
                try { resp = ((Class<?>) c.getMethod("getResponseClass").invoke(h)).getSimpleName(); } catch (Throwable t) {}
                out.add(method + " " + url + " " + resp + " " + c.getSimpleName());
            }
        }
        for (String s : out) System.out.println(s);
    }
}
