/**
 * The `model` of the OpenAI-compatible doors (`/v1/chat/completions`, `/v1/responses`): `familiar`
 * (the default agent) or `familiar/<agentId>`. One reading for both doors, so they refuse the same
 * names with the same 404.
 */
import { HttpError } from "./http-util.js";

/**
 * The agent a `model` names: undefined for `familiar` (the front desk answers with the default agent,
 * or the echo agent says what is wrong). A name outside the `familiar` family or an unknown agent is a
 * 404 `model_not_found` on the `model` field.
 */
export function agentOfModel(model: string, agentExists: (id: string) => boolean): string | undefined {
  if (model !== "familiar" && !model.startsWith("familiar/"))
    throw new HttpError(
      404,
      "model_not_found",
      `The model '${model}' does not exist (use familiar or familiar/<agentId>)`,
      {},
      "model",
    );
  const agentId = model === "familiar" ? undefined : model.slice("familiar/".length);
  if (agentId !== undefined && !agentExists(agentId))
    throw new HttpError(
      404,
      "model_not_found",
      `The model '${model}' does not exist: no agent "${agentId}"`,
      {},
      "model",
    );
  return agentId;
}
