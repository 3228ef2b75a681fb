import { createTRPCRouter, viewerProcedure } from "@/server/trpc";
import * as templates from "./templates";

/** The templates a new experiment can start from (templates/<name>/), for the New experiment page. */
export const templatesRouter = createTRPCRouter({
  list: viewerProcedure.query(() => templates.listTemplates()),
});
