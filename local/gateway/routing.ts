import type { RouteLayout } from '../../config/layout';

/** A request matched to a REST API resource and method. */
export interface RouteMatch<R extends RouteLayout = RouteLayout> {
  readonly route: R;
  readonly pathParameters: Readonly<Record<string, string>> | null;
}

type Segment = { readonly literal: string } | { readonly parameter: string };

const decode = (segment: string): string => {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
};

/**
 * Matches paths the way API Gateway matches resources: segment by segment,
 * a literal segment winning over a `{name}` parameter, which matches exactly
 * one non-empty segment.
 */
export function compileRoutes<R extends RouteLayout>(routes: readonly R[]) {
  const compiled = routes.map((route) => ({
    route,
    segments: route.path
      .split('/')
      .filter(Boolean)
      .map((part): Segment => {
        const parameter = /^\{([A-Za-z0-9_]+)\}$/.exec(part)?.[1];
        return parameter ? { parameter } : { literal: part };
      }),
  }));
  // More literal segments first, so /v1/jobs/{id} never shadows a literal sibling such as /v1/jobs/export.
  const literals = (segments: readonly Segment[]) =>
    segments.filter((segment) => 'literal' in segment).length;
  compiled.sort((a, b) => literals(b.segments) - literals(a.segments));

  return function match(method: string, path: string): RouteMatch<R> | undefined {
    const parts = path === '/' ? [] : path.slice(1).split('/');
    if (!path.startsWith('/') || parts.includes('')) return undefined;
    for (const { route, segments } of compiled) {
      if (route.method !== method || segments.length !== parts.length) continue;
      const parameters: Record<string, string> = {};
      const matches = segments.every((segment, index) => {
        const part = parts[index] as string;
        if ('literal' in segment) return segment.literal === part;
        parameters[segment.parameter] = decode(part);
        return true;
      });
      if (matches)
        return { route, pathParameters: segments.some((s) => 'parameter' in s) ? parameters : null };
    }
    return undefined;
  };
}
