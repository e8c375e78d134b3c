import type { Principal } from "../services/verification/authenticate.ts";

// What keyplane's middleware adds to each request.
declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      id: string;
      principal?: Principal;
    }
  }
}
export {};
